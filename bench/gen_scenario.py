"""Write a valid scenario file (CONTRACT section 3) with N events, fast enough for a million.

Event keys are a pure function of the event's index (`event_key(i)`), so a load generator can look up
random events without reading the file: bench/wrk/scale_lookup.lua computes the same keys.

    python bench/gen_scenario.py 100000 .bench/scale-100000/scale.yaml [--syntax json]

Four kinds of events take turns, so the loaded store is not one shape repeated: pending with nothing
paid, pending partly paid, paid (present_amount with a discount) and canceled.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

MULT = 2654435761  # Knuth's multiplicative hash: a bijection modulo 2**32, so keys never collide


def event_key(i: int) -> str:
    """The UUID (version 4 layout, variant 10xx) of event number i; unique for 0 <= i < 2**32."""
    h = (i * MULT) % 4294967296
    a, b = h // 65536, h % 65536
    c = (i * 40503) % 65536
    return f"{a:04x}{b:04x}-{c:04x}-4{i % 4096:03x}-a{(i // 4096) % 4096:03x}-{i:012x}"


def _installment_keys(i: int, j: int) -> tuple[str, str]:
    h = (i * MULT + 12345) % 4294967296
    return (
        f"{h:08x}-{j:04x}-4000-b000-{i:012x}",  # event_conciliation_key: unique by (i, j)
        f"{h:08x}-{j:04x}-4000-9000-{i:012x}",  # installment_key
    )


def _event_fields(i: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Event number i as (field, JSON-and-YAML literal) pairs, and its instalments' key pairs."""
    security = f"{(i // 7) % 65536:08x}-5ec0-4000-8000-{(i // 7):012x}"
    investment = f"{(i // 3) % 65536:08x}-1a00-4000-8000-{(i // 3):012x}"
    cents = 10000 + (i * 7919) % 9_990_000  # 100.00 .. 99999.99

    def money(c: int) -> str:
        return f"{c // 100}.{c % 100:02d}"

    kind = i % 4
    month = 1 + i % 12
    day = 1 + i % 28
    fields = [
        ("extraordinary_event_conciliation_key", event_key(i)),
        ("security_key", security),
        ("investment_key", investment),
        ("amortization_type", "present_amount" if kind == 2 else "early_amortization"),
        ("total_expected_amount", money(cents)),
    ]
    if kind == 1:  # pending, partly paid
        fields += [("total_paid_amount", money(cents // 3)), ("status", "pending_conciliation")]
    elif kind == 2:  # paid, present_amount with a discount
        discount = cents // 40
        fields += [
            ("total_discount_amount", money(discount)),
            ("total_paid_amount", money(cents - discount)),
            ("status", "paid"),
        ]
    elif kind == 3:
        fields += [("status", "canceled")]
    fields += [
        ("reference_date", f"2026-{month:02d}-{day:02d}"),
        ("due_date", f"2026-{month:02d}-28" if kind == 2 else f"2027-{month:02d}-{day:02d}"),
        ("paid_at", f"2026-{month:02d}-{day:02d}" if kind == 2 else "null"),
    ]
    installments = [_installment_keys(i, j) for j in range(2 if kind in (0, 2) else 1)]
    return fields, installments


_NUMBERS = {"total_expected_amount", "total_paid_amount", "total_discount_amount"}


def _event_yaml(i: int) -> str:
    fields, installments = _event_fields(i)
    lines = [f"{'- ' if n == 0 else '  '}{name}: {value}" for n, (name, value) in enumerate(fields)]
    lines.append("  event_conciliation_list:")
    lines += [f"    - {{event_conciliation_key: {k}, installment_key: {ik}}}" for k, ik in installments]
    return "\n".join(lines) + "\n"


def _event_json(i: int) -> str:
    fields, installments = _event_fields(i)
    parts = [
        f'"{name}":{value}' if name in _NUMBERS or value == "null" else f'"{name}":"{value}"' for name, value in fields
    ]
    listed = ",".join(f'{{"event_conciliation_key":"{k}","installment_key":"{ik}"}}' for k, ik in installments)
    return "{" + ",".join(parts) + ',"event_conciliation_list":[' + listed + "]}"


ACCOUNTS = """accounts:
  - account_id: "0001-123456"
    registration_date: "2026-01-10T09:00:00-03:00"
    limit:
      pix:
        withdraw:
          - {start_time: "06:00:00-03:00", amount: 500000}
          - {start_time: "20:00:00-03:00", amount: 300000}
        transaction_natural_person:
          - {start_time: "06:00:00-03:00", amount: 1000000}
          - {start_time: "20:00:00-03:00", amount: 100000}
    recipient_list:
      limit:
        pix:
          transaction:
            - {start_time: "06:00:00-03:00", amount: 2000000}
      recipients: []
"""


ACCOUNT_JSON = json.dumps(yaml.safe_load(ACCOUNTS)["accounts"], separators=(",", ":"), default=str)


def write_scenario(count: int, path: Path, syntax: str = "yaml") -> None:
    """`syntax` yaml: block style, as a person writes a scenario; json: the same data in JSON syntax (which
    YAML includes), as a program would write a big one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        description = f"Generated for the benchmark - {count} events."
        if syntax == "json":
            out.write(f'{{"description":"{description}","events":[')
            for start in range(0, count, 10000):
                chunk = ",".join(_event_json(i) for i in range(start, min(count, start + 10000)))
                out.write(("," if start else "") + chunk)
            out.write(f'],"accounts":{ACCOUNT_JSON}}}\n')
            return
        out.write(f"description: {description}\n")
        out.write("events:\n" if count else "events: []\n")
        for start in range(0, count, 10000):
            out.write("".join(_event_yaml(i) for i in range(start, min(count, start + 10000))))
        out.write(ACCOUNTS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, help="number of events")
    parser.add_argument("output", type=Path, help="scenario file to write (its stem is the scenario's name)")
    parser.add_argument(
        "--syntax",
        choices=("yaml", "json"),
        default="yaml",
        help="yaml: block style (default); json: JSON syntax, which is YAML too",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    write_scenario(args.count, args.output, args.syntax)
    size = args.output.stat().st_size
    seconds = time.perf_counter() - started
    print(f"{args.output}: {args.count} events, {size / 1e6:.1f} MB in {seconds:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
