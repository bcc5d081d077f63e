-- What get.lua and upload.lua share: each thread keeps ready requests in `requests` (its
-- init fills them and picks `next_request`), sends them in turn, and prints one
-- machine-readable line at the end.
counter = 0
requests = {}
next_request = 1

function setup(thread)
    counter = counter + 1
    thread:set("id", counter)
end

function request()
    local r = requests[next_request]
    next_request = next_request % #requests + 1
    return r
end

-- requests/s, p50 and p99 in ms, socket errors, non-2xx/3xx answers, requests, bytes read.
function done(summary, latency, requests)
    local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
    io.write(string.format("RESULT %.2f %.3f %.3f %d %d %d %d\n", summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors, summary.errors.status, summary.requests, summary.bytes))
end
