-- wrk's request for bench/compare.sh and bench/profile.sh, from the environment:
-- WRK_METHOD (default GET), WRK_BODY, WRK_HEADERS ("name: value" joined by ^).
wrk.method = os.getenv("WRK_METHOD") or "GET"
wrk.body = os.getenv("WRK_BODY")
for line in string.gmatch(os.getenv("WRK_HEADERS") or "", "[^^]+") do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  wrk.headers[name] = value
end
