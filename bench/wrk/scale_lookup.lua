-- GET of a random event among the N loaded ones (first argument: N). Keys are computed exactly as
-- bench/gen_scenario.py's event_key(i) writes them, so no key list has to be read.
dofile(os.getenv("BENCH_WRK_DIR") .. "/report.lua")

local count = 1000
local prefix = "/event_conciliation/extraordinary_event/"

function init(args)
  if args[1] then count = tonumber(args[1]) end
  math.randomseed(os.time())
end

function event_key(i)
  local h = (i * 2654435761) % 4294967296
  local a, b = math.floor(h / 65536), h % 65536
  local c = (i * 40503) % 65536
  return string.format("%04x%04x-%04x-4%03x-a%03x-%012x", a, b, c, i % 4096, math.floor(i / 4096) % 4096, i)
end

function request()
  return wrk.format(nil, prefix .. event_key(math.random(0, count - 1)))
end
