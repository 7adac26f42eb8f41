-- POST /limits/account/{account_id}/recipient_list/recipient, each request with a NEW valid CPF
-- (a repeated document answers 409). CPFs are 9 base digits from a counter plus the two mod-11 check
-- digits; the base is the script's first argument (`wrk ... -- BASE`), so every run of one server
-- uses its own numbers. The punctuated layout is used, as in the interface's example.
dofile(os.getenv("BENCH_WRK_DIR") .. "/report.lua")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

local base = 100000000
local counter = 0

function init(args)
  if args[1] then base = tonumber(args[1]) end
end

local function check_digit(digits, first_weight)
  local sum = 0
  for i = 1, #digits do sum = sum + digits[i] * (first_weight - i + 1) end
  local r = sum % 11
  if r < 2 then return 0 end
  return 11 - r
end

function cpf(n)
  local s = string.format("%09d", n)
  local d = {}
  for i = 1, 9 do d[i] = string.byte(s, i) - 48 end
  local c1 = check_digit(d, 10)
  d[10] = c1
  local c2 = check_digit(d, 11)
  return string.format("%s.%s.%s-%d%d", s:sub(1, 3), s:sub(4, 6), s:sub(7, 9), c1, c2)
end

-- the next counter value whose 9 digits are not one digit repeated (such a CPF is invalid)
function next_number()
  counter = counter + 1
  local n = base + counter
  if n % 111111111 == 0 then
    counter = counter + 1
    n = n + 1
  end
  return n
end

-- A session's recipient list holds at most 10,000 added recipients (mock-server --max-recipients): every
-- PER_SESSION requests go to a new session (X-Mock-Session), as a suite's tests would, so the server keeps
-- its default options and every answer is a 201. Servers that have no sessions ignore the header.
local PER_SESSION = 5000

function request()
  local session = "bench-" .. base .. "-" .. math.floor(counter / PER_SESSION)
  return wrk.format(nil, nil, { ["Content-Type"] = "application/json", ["X-Mock-Session"] = session },
    '{"document_number":"' .. cpf(next_number()) .. '"}')
end
