-- wrk script shared by every cell of benches/load/run.sh.
--
-- Always: prints one line "BENCHJSON {...}" at the end with the request
-- count, errors and latency percentiles (microseconds), for run.sh to parse.
--
-- Environment (all optional):
--   BENCH_RANDOM_N=N        request a random one of N paths (uniform)
--   BENCH_RANDOM_FMT=FMT    string.format pattern for the path, given
--                           (int(i / 1000), i); e.g. "/site/%03d/%06d.xml"
--   BENCH_PATHS="/a /b ..." request a random one of these paths (uniform,
--                           the same draw as BENCH_RANDOM_N over the list)
--   BENCH_COUNT_CACHE=1     count the X-Axle-Cache values of the responses
--                           and the body bytes (costs client CPU: wrk then
--                           parses every response's headers into Lua)

local random_n = tonumber(os.getenv("BENCH_RANDOM_N") or "")
local random_fmt = os.getenv("BENCH_RANDOM_FMT") or "/%03d/%06d.xml"
local paths = nil
if os.getenv("BENCH_PATHS") then
   paths = {}
   for p in os.getenv("BENCH_PATHS"):gmatch("%S+") do table.insert(paths, p) end
   if #paths == 0 then paths = nil else random_n = #paths end
end
local count_cache = os.getenv("BENCH_COUNT_CACHE") == "1"

local threads = {}
local next_id = 0

function setup(thread)
   next_id = next_id + 1
   thread:set("thread_id", next_id)
   table.insert(threads, thread)
end

if random_n then
   function init(args)
      -- thread_id is set by setup() before init() runs
      math.randomseed(os.time() * 1000 + (thread_id or 0) * 7919)
      for _ = 1, 10 do math.random() end
   end

   function request()
      local i = math.random(0, random_n - 1)
      if paths then return wrk.format(nil, paths[i + 1]) end
      return wrk.format(nil, string.format(random_fmt, math.floor(i / 1000), i))
   end
end

if count_cache then
   cache_counts = {}
   body_bytes = 0
   responses = 0
   function response(status, headers, body)
      local v = headers["x-axle-cache"] or headers["X-Axle-Cache"] or "(none)"
      cache_counts[v] = (cache_counts[v] or 0) + 1
      body_bytes = body_bytes + #body
      responses = responses + 1
   end
end

local function json_string(s)
   return '"' .. tostring(s):gsub('[%c"\\]', function(c)
      return string.format("\\u%04x", string.byte(c))
   end) .. '"'
end

function done(summary, latency, requests)
   local e = summary.errors
   local parts = {
      string.format('"requests":%d', summary.requests),
      string.format('"duration_us":%d', summary.duration),
      string.format('"bytes":%d', summary.bytes),
      string.format('"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}',
         e.connect, e.read, e.write, e.status, e.timeout),
      string.format('"latency_us":{"min":%d,"mean":%.1f,"stdev":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d}',
         latency.min, latency.mean, latency.stdev, latency.max,
         latency:percentile(50), latency:percentile(90),
         latency:percentile(99), latency:percentile(99.9)),
   }
   if count_cache then
      local totals, bytes, n = {}, 0, 0
      for _, t in ipairs(threads) do
         local c = t:get("cache_counts") or {}
         for k, v in pairs(c) do totals[k] = (totals[k] or 0) + v end
         bytes = bytes + (t:get("body_bytes") or 0)
         n = n + (t:get("responses") or 0)
      end
      local cc = {}
      for k, v in pairs(totals) do
         table.insert(cc, json_string(k) .. ":" .. string.format("%d", v))
      end
      table.sort(cc)
      table.insert(parts, '"cache_counts":{' .. table.concat(cc, ",") .. '}')
      table.insert(parts, string.format('"responses_counted":%d,"body_bytes":%d', n, bytes))
   end
   io.write("BENCHJSON {" .. table.concat(parts, ",") .. "}\n")
end
