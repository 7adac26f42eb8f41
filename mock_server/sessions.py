"""Sessions: isolated stores, journals, faults and clocks on one server, the one place that owns state."""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime

from .clock import Clock
from .errors import ScenarioNotFound
from .faults import Faults
from .ids import IdSource
from .journal import Journal
from .models import Scenario
from .store import Store

DEFAULT_SESSION = "default"
MAX_SESSIONS = 256


class Session:
    """Everything one test run sees: its store over a scenario, its journal, faults, clock and ids."""

    def __init__(self, name: str, scenario: Scenario, seed: int | None, clock_start: datetime | None) -> None:
        self.name = name
        self.store = Store(scenario)
        self.journal = Journal()
        self.faults = Faults()
        self.clock = Clock(clock_start)
        self.ids = IdSource(seed, name)

    @property
    def scenario(self) -> Scenario:
        return self.store.seed

    def reset(self, scenario: Scenario | None = None) -> None:
        """Back to how a new session starts (on `scenario` when given)."""
        self.store.reset(scenario)
        self.journal.clear()
        self.faults.clear()
        self.clock.reset()
        self.ids.reset()


class Sessions:
    """The registry: sessions are made on first use from the default scenario; the least recently used
    one beyond MAX_SESSIONS is dropped."""

    def __init__(
        self,
        scenarios: dict[str, Scenario],
        default_scenario: str,
        seed: int | None = None,
        clock_start: datetime | None = None,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        if default_scenario not in scenarios:
            raise ScenarioNotFound(f"No scenario named {default_scenario!r}.")
        self.scenarios = scenarios
        self.default_scenario = default_scenario
        self._seed = seed
        self._clock_start = clock_start
        self._max = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def get(self, name: str = DEFAULT_SESSION) -> Session:
        session = self._sessions.get(name)
        if session is None:
            session = Session(name, self.scenarios[self.default_scenario], self._seed, self._clock_start)
            self._sessions[name] = session
            if len(self._sessions) > self._max:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(name)
        return session

    def scenario(self, name: str) -> Scenario:
        try:
            return self.scenarios[name]
        except KeyError:
            raise ScenarioNotFound(f"No scenario named {name!r}.") from None

    def clear(self) -> None:
        """Forget every session: the next call of each starts from its seed again."""
        self._sessions.clear()

    def __len__(self) -> int:
        return len(self._sessions)
