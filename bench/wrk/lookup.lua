-- GET of one event (the URL given to wrk names it): a static request, no per-request Lua.
dofile(os.getenv("BENCH_WRK_DIR") .. "/report.lua")
