-- The event lookup through the cluster's balancer, spread over 64 sessions (X-Mock-Session c0..c63): the
-- balancer hashes each session to one process, so the sessions are what spreads the load.
dofile(os.getenv("BENCH_WRK_DIR") .. "/report.lua")

local sessions = 64
local n = 0
local headers = {}

function request()
  n = n + 1
  headers["X-Mock-Session"] = "c" .. (n % sessions)
  return wrk.format("GET", "/event_conciliation/extraordinary_event/9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11", headers)
end
