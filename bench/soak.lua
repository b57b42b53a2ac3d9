-- wrk's request and answer check for bench/soak.sh: every answer must be an envelope,
-- `"ok":true` or an error with a classification, and never a 500. Counts per thread,
-- summed in done().
wrk.method = "POST"
wrk.body = os.getenv("WRK_BODY")
for line in string.gmatch(os.getenv("WRK_HEADERS") or "", "[^^]+") do
  local name, value = line:match("^([^:]+):%s*(.*)$")
  wrk.headers[name] = value
end

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

function init()
  ok, classified, unclassified, five_hundred = 0, 0, 0, 0
  kinds = {}
end

function response(status, headers, body)
  if status == 500 then
    five_hundred = five_hundred + 1
  end
  if body:find('"ok":true', 1, true) then
    ok = ok + 1
    return
  end
  local kind = body:match('"classification":"([a-z_]+)"')
  if kind then
    classified = classified + 1
    kinds[kind] = (kinds[kind] or 0) + 1
  else
    unclassified = unclassified + 1
  end
end

function done(summary, latency, requests)
  local totals = { ok = 0, classified = 0, unclassified = 0, five_hundred = 0 }
  local kinds_all = {}
  for _, t in ipairs(threads) do
    for key, _ in pairs(totals) do
      totals[key] = totals[key] + (t:get(key) or 0)
    end
    for kind, n in pairs(t:get("kinds") or {}) do
      kinds_all[kind] = (kinds_all[kind] or 0) + n
    end
  end
  local parts = {}
  for kind, n in pairs(kinds_all) do
    table.insert(parts, kind .. "=" .. n)
  end
  table.sort(parts)
  io.write(string.format("answers ok=%d classified=%d unclassified=%d status500=%d socket_errors=%d\n",
    totals.ok, totals.classified, totals.unclassified, totals.five_hundred,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write("classifications " .. table.concat(parts, " ") .. "\n")
end
