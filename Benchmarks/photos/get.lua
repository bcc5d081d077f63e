-- make bench-photos, downloads: wrk -s get.lua with PATHS (a file of request paths, one a
-- line: the server's signed URLs or nginx's /<2 hex>/<hash>) in the environment. Each
-- connection's next request is the next path in turn (each thread starting elsewhere), so
-- with PATHS of one line it is a single photo, with 200 lines 200 distinct files.
-- Headers given with -H (If-None-Match) go on every request.
local paths_file = os.getenv("PATHS")
local counter = 0
local requests = {}
local next_request = 1

function setup(thread)
    counter = counter + 1
    thread:set("id", counter)
end

function init(args)
    for path in io.lines(paths_file) do
        if #path > 0 then requests[#requests + 1] = wrk.format("GET", path) end
    end
    next_request = ((id or 1) - 1) * math.floor(#requests / 2) % #requests + 1
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
