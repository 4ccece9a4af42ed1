-- wrk script: POST pre-generated batch bodies (files given after --: API key, then bodies).
local key
local bodies = {}

init = function(args)
  key = args[1]
  for i = 2, #args do
    local f = assert(io.open(args[i], "rb"))
    bodies[#bodies + 1] = f:read("*a")
    f:close()
  end
end

request = function()
  local body = bodies[math.random(#bodies)]
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key}, body)
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "errors": %d, "non2xx": %d, "p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
