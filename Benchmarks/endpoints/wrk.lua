-- Drives one endpoint as the seeded users, each request as a random user with their
-- own bearer token: wrk -s wrk.lua, with ENDPOINT (post_entry, timeline, mark_read,
-- list_diaries, join) and USERS (the file tokens.py wrote) in the environment.
-- DELAY_MS paces each connection, for a latency run below the maximum rate.
local endpoint = os.getenv("ENDPOINT") or "timeline"
local users_file = os.getenv("USERS") or "users.tsv"
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
local users = {}
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("id", counter)
end

-- Every request but POST entry's (a new id each time) is the same text for a given user,
-- so it is formatted once here: wrk then spends less of the shared cores per request.
local function fixed_request(user)
    local headers = { ["Authorization"] = user.token }
    if endpoint == "timeline" then
        return wrk.format("GET", "/v1/diaries/" .. user.diary .. "/entries?limit=20", headers)
    elseif endpoint == "mark_read" then
        return wrk.format("POST", "/v1/diaries/" .. user.diary .. "/entries/" .. user.entry .. "/read", headers)
    elseif endpoint == "list_diaries" then
        return wrk.format("GET", "/v1/diaries", headers)
    elseif endpoint == "join" then
        headers["Content-Type"] = "application/json"
        return wrk.format("POST", "/v1/diaries/join", headers, '{"inviteCode":"' .. user.code .. '"}')
    elseif endpoint == "post_entry" then
        return nil
    end
    return wrk.format("GET", "/health")
end

function init(args)
    for line in io.lines(users_file) do
        local n, token, diary, code, entry = line:match("^(%d+)\t(%S+)\t(%S+)\t(%S+)\t(%S+)$")
        if n then
            local user = { token = "Bearer " .. token, diary = diary, code = code, entry = entry }
            user.request = fixed_request(user)
            users[#users + 1] = user
        end
    end
    math.randomseed(os.time() + (id or 0) * 7919)
end

package.path = "Benchmarks/endpoints/?.lua;" .. package.path
local uuid = require("uuid")

function request()
    local user = users[math.random(#users)]
    if user.request then return user.request end
    return wrk.format("POST", "/v1/diaries/" .. user.diary .. "/entries",
        { ["Authorization"] = user.token, ["Content-Type"] = "application/json" },
        '{"id":"' .. uuid() .. '","content":"ベンチマークの日記"}')
end

-- Only when pacing: with a delay function, wrk sends every request from a timer, even a 0 ms one.
if delay_ms > 0 then
    function delay()
        return delay_ms
    end
end

-- One machine-readable line: requests/s, p50 and p99 in ms, socket errors, non-2xx answers, requests.
function done(summary, latency, requests)
    local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
    io.write(string.format("RESULT %.0f %.3f %.3f %d %d %d\n", summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors, summary.errors.status, summary.requests))
end
