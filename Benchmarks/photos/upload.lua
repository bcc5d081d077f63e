-- make bench-photos, uploads: wrk -s upload.lua with BODIES (a file naming one JPEG a line),
-- TOKENS (one access token a line) and THREADS (wrk's -t) in the environment. Each thread
-- keeps its share of the bodies (every THREADS-th) as ready requests, body i always from
-- user i mod #tokens, and sends them in turn, so that the daily limit spreads over the users.
local bodies_file = os.getenv("BODIES")
local tokens_file = os.getenv("TOKENS")
local threads = tonumber(os.getenv("THREADS") or "1")
dofile("Benchmarks/photos/rotation.lua") -- setup, request, done; wrk runs from the repository's root

function init(args)
    local tokens = {}
    for line in io.lines(tokens_file) do
        if #line > 0 then tokens[#tokens + 1] = line end
    end
    local i = 0
    for path in io.lines(bodies_file) do
        if #path > 0 then
            i = i + 1
            if (i - 1) % threads == (id or 1) - 1 then
                local file = assert(io.open(path, "rb"))
                local body = file:read("*a")
                file:close()
                requests[#requests + 1] = wrk.format("POST", "/v1/photos", {
                    ["Authorization"] = "Bearer " .. tokens[(i - 1) % #tokens + 1],
                    ["Content-Type"] = "image/jpeg",
                }, body)
            end
        end
    end
    collectgarbage()
    next_request = ((id or 1) * 7) % #requests + 1
end
