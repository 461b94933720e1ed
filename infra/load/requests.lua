-- wrk script for infra/scripts/load.sh: POSTs the JSON bodies of $LOAD_BODIES (one per
-- line) in turn and prints one JSON line of figures (latencies in milliseconds;
-- http_errors counts answers of status 400 and above).
local bodies = {}
local sent = 0

function init(args)
  for line in io.lines(os.getenv("LOAD_BODIES")) do
    bodies[#bodies + 1] = line
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  sent = sent + 1
  return wrk.format(nil, wrk.path, nil, bodies[(sent % #bodies) + 1])
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  io.write(string.format(
    '{"requests": %d, "seconds": %.3f, "rps": %.1f, "p50_ms": %.3f, "p95_ms": %.3f, ' ..
    '"p99_ms": %.3f, "max_ms": %.3f, "http_errors": %d, "connect_errors": %d, ' ..
    '"timeouts": %d, "read_errors": %d}\n',
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000,
    summary.errors.status, summary.errors.connect, summary.errors.timeout,
    summary.errors.read))
end
