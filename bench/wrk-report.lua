-- wrk script of `npm run bench` (used by bench/load.mjs when BENCH_TOOL=wrk):
-- sets the method and headers from the environment and prints one JSON line at the end.
wrk.method = os.getenv("BENCH_WRK_METHOD") or "GET"
local lines = os.getenv("BENCH_WRK_HEADERS") or ""
for line in string.gmatch(lines, "[^\n]+") do
  local name, value = string.match(line, "^([^:]+):%s*(.*)$")
  if name then wrk.headers[name] = value end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end
