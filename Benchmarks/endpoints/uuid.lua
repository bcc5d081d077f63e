-- A random version-4 UUID, for the wrk scripts' POSTs (require "uuid"; wrk runs from the
-- repository root, and each script adds Benchmarks/endpoints to package.path).
return function()
    local t = {}
    for i = 1, 16 do t[i] = math.random(0, 255) end
    t[7] = t[7] % 16 + 64
    t[9] = t[9] % 64 + 128
    return string.format("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", (table.unpack or unpack)(t))
end
