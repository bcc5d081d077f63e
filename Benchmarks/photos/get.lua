-- make bench-photos, downloads: wrk -s get.lua with PATHS (a file of request paths, one a
-- line: the server's signed URLs or nginx's /<2 hex>/<hash>) in the environment. Each
-- connection's next request is the next path in turn (each thread starting elsewhere), so
-- with PATHS of one line it is a single photo, with 200 lines 200 distinct files.
-- Headers given with -H (If-None-Match) go on every request.
local paths_file = os.getenv("PATHS")
dofile("Benchmarks/photos/rotation.lua") -- setup, request, done; wrk runs from the repository's root

function init(args)
    for path in io.lines(paths_file) do
        if #path > 0 then requests[#requests + 1] = wrk.format("GET", path) end
    end
    next_request = ((id or 1) - 1) * math.floor(#requests / 2) % #requests + 1
end
