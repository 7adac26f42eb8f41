-- POST /limits/account/{account_id}/limit_update_request with the interface's example body (schema-valid,
-- so it goes through validation and is applied). Repeating it on one account is allowed: each call is a new
-- proposal. A static request: wrk builds it once.
dofile(os.getenv("BENCH_WRK_DIR") .. "/report.lua")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"pix":{"withdraw":[{"start_time":"06:00:00-03:00","amount":400000},' ..
  '{"start_time":"20:00:00-03:00","amount":200000}],' ..
  '"change":[{"start_time":"06:00:00-03:00","amount":400000}],' ..
  '"transaction_natural_person":[{"start_time":"06:00:00-03:00","amount":1200000},' ..
  '{"start_time":"20:00:00-03:00","amount":100000}]}}'
