-- wrk script: one Plausible-style pageview per request, from many (forwarded) client IPs,
-- over a heavy-tailed set of pages. Args after --: domain, number of pages.
local domain, pages
local ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"

init = function(args)
  domain = args[1]
  pages = tonumber(args[2])
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end

request = function()
  local ip = string.format("10.%d.%d.%d", math.random(0, 255), math.random(0, 255), math.random(1, 254))
  local page = math.floor(pages ^ math.random())
  local body = string.format('{"name":"pageview","url":"https://%s/page/%d","domain":"%s","referrer":null}', domain, page, domain)
  return wrk.format("POST", "/api/event", {["Content-Type"] = "text/plain", ["User-Agent"] = ua, ["X-Forwarded-For"] = ip}, body)
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "errors": %d, "non2xx": %d, "p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
