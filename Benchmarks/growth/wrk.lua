-- Drives one everyday endpoint against one diary of Benchmarks/growth/seed.sql:
--   wrk -t T -c C -s wrk.lua URL, with ENDPOINT, SIZE (1, 2, 3), THREADS (T) and DATA
-- (data.py's file) in the environment.
--   list          GET    /v1/diaries                                  as m
--   diary         GET    /v1/diaries/{d}                              as m
--   members       GET    /v1/diaries/{d}/members                      as m
--   timeline      GET    /v1/diaries/{d}/entries?limit=20             as m
--   timeline_deep GET    …/entries?limit=20&before=<30th oldest>      as m
--   entry         GET    …/entries/{one of p's 16 newest}             as m
--   reads         GET    …/entries/{one of p's 16 newest}/reads       as m
--   mark_read     POST   …/entries/{one of p's 16 newest}/read        as m
--   patch         PATCH  …/entries/{one of m's 16 newest} {"content"} as m
--   post_delete   POST   …/entries {"id","content"}, then DELETE that entry, as m
--   join_leave    POST   /v1/diaries/join {"inviteCode"}, then DELETE /v1/diaries/{d}/members/{own id}, as joiner i
-- A thread cycles through its share of the entries (thread t: items t, t + T, …), so that two
-- writes in flight seldom touch one row. The pairs need one connection per thread (-t equal
-- to -c): wrk's request() and response() do not say which connection they serve, so only then
-- is a thread's state one connection's, and connection i can alternate its own pair, as joiner
-- i. A pair's second request follows only a 2xx first one; otherwise the first is tried again
-- (and counted as an error).
local endpoint = os.getenv("ENDPOINT") or "list"
local size = os.getenv("SIZE") or "1"
local threads = tonumber(os.getenv("THREADS") or "1")
local data_file = os.getenv("DATA") or "growth.tsv"
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("id", counter)
end

local function split(text)
    local items = {}
    for item in text:gmatch("[^,]+") do items[#items + 1] = item end
    return items
end

-- This thread's share of a list: items id, id + threads, …, or item id modulo its length
-- when the list is shorter than the thread count.
local function share(list)
    local mine = {}
    for i = (id or 1), #list, threads do mine[#mine + 1] = list[i] end
    if #mine == 0 then mine[1] = list[((id or 1) - 1) % #list + 1] end
    return mine
end

local fixed = {}  -- the requests this thread cycles through, formatted once
local next_fixed = 0
local base        -- /v1/diaries/{d}
local headers, json_headers
local code, own_id
local pending     -- the entry the last POST made, for the DELETE that follows it
local posted      -- the id the last POST sent
local joined = false

function init(args)
    for line in io.lines(data_file) do
        local f = {}
        for field in line:gmatch("[^\t]+") do f[#f + 1] = field end
        if f[1] == size then
            local diary, token, cursor = f[3], f[6], f[7]
            code = f[4]
            base = "/v1/diaries/" .. diary
            if endpoint == "join_leave" then
                own_id = share(split(f[10]))[1]
                token = share(split(f[11]))[1]
            end
            headers = { ["Authorization"] = "Bearer " .. token }
            json_headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
            local function add(method, path, body) fixed[#fixed + 1] = wrk.format(method, path, body and json_headers or headers, body) end
            if endpoint == "list" then
                add("GET", "/v1/diaries")
            elseif endpoint == "diary" then
                add("GET", base)
            elseif endpoint == "members" then
                add("GET", base .. "/members")
            elseif endpoint == "timeline" then
                add("GET", base .. "/entries?limit=20")
            elseif endpoint == "timeline_deep" then
                add("GET", base .. "/entries?limit=20&before=" .. cursor)
            elseif endpoint == "entry" then
                for _, entry in ipairs(share(split(f[8]))) do add("GET", base .. "/entries/" .. entry) end
            elseif endpoint == "reads" then
                for _, entry in ipairs(share(split(f[8]))) do add("GET", base .. "/entries/" .. entry .. "/reads") end
            elseif endpoint == "mark_read" then
                for _, entry in ipairs(share(split(f[8]))) do add("POST", base .. "/entries/" .. entry .. "/read") end
            elseif endpoint == "patch" then
                for _, entry in ipairs(share(split(f[9]))) do
                    add("PATCH", base .. "/entries/" .. entry, '{"content":"書き直した日記 ' .. (id or 1) .. '"}')
                end
            elseif endpoint ~= "post_delete" and endpoint ~= "join_leave" then
                error("unknown ENDPOINT " .. endpoint)
            end
        end
    end
    if not base then error("no line for SIZE " .. size .. " in " .. data_file) end
    math.randomseed(os.time() + (id or 0) * 7919)
end

package.path = "Benchmarks/endpoints/?.lua;" .. package.path
local uuid = require("uuid")

function request()
    if #fixed > 0 then
        next_fixed = next_fixed % #fixed + 1
        return fixed[next_fixed]
    end
    if endpoint == "post_delete" then
        if pending then
            return wrk.format("DELETE", base .. "/entries/" .. pending, headers)
        end
        posted = uuid()
        return wrk.format("POST", base .. "/entries", json_headers, '{"id":"' .. posted .. '","content":"growth post+delete"}')
    end
    if joined then
        return wrk.format("DELETE", base .. "/members/" .. own_id, headers)
    end
    return wrk.format("POST", "/v1/diaries/join", json_headers, '{"inviteCode":"' .. code .. '"}')
end

-- Only for the pairs: with a response function wrk hands every body to Lua.
if endpoint == "post_delete" then
    function response(status, headers, body)
        if pending then pending = nil
        elseif status >= 200 and status < 300 then pending = posted end
    end
elseif endpoint == "join_leave" then
    function response(status, headers, body)
        if joined then joined = false
        elseif status >= 200 and status < 300 then joined = true end
    end
end

-- One machine-readable line: requests/s, p50 and p99 in ms, socket errors, non-2xx answers,
-- requests, and the socket errors by kind (connect/read/write/timeout).
function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("RESULT %.0f %.3f %.3f %d %d %d %d/%d/%d/%d\n", summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, e.connect + e.read + e.write + e.timeout, e.status,
        summary.requests, e.connect, e.read, e.write, e.timeout))
end
