-- 256 busy sessions (the cap): requests cycle through X-Mock-Session s0..s255, alternating the account limit
-- change and a recipient add with a new CPF, so every session gets its own store copy, journal and proposals.
dofile(os.getenv("BENCH_WRK_DIR") .. "/recipient_add.lua")  -- report, cpf(), next_number(), init(BASE)

local sessions = 256
local n = 0
local limit_body = '{"pix":{"withdraw":[{"start_time":"06:00:00-03:00","amount":400000},' ..
  '{"start_time":"20:00:00-03:00","amount":200000}],' ..
  '"transaction_natural_person":[{"start_time":"06:00:00-03:00","amount":1200000}]}}'
local headers = {["Content-Type"] = "application/json"}

function request()
  n = n + 1
  headers["X-Mock-Session"] = "s" .. (n % sessions)
  if math.floor(n / sessions) % 2 == 0 then
    return wrk.format("POST", "/limits/account/0001-123456/limit_update_request", headers, limit_body)
  end
  return wrk.format("POST", "/limits/account/0001-123456/recipient_list/recipient", headers,
    '{"document_number":"' .. cpf(next_number()) .. '"}')
end
