-- wrk script for benches/soak.sh: why it exists: the soak's load is a mix,
-- not one URL. Each request is drawn from: hits (one of SOAK_DOCS cached
-- documents), misses (a document with a new ?x=N), 404s and a malformed
-- document (500). HEADs are sent by side.py: wrk's parser waits for a body
-- after a HEAD response and stalls the connection. Counts every status; at
-- the end prints one line "SOAKJSON {...}" with the counts and wrk's socket
-- errors for soak.sh.

local ndocs = tonumber(os.getenv("SOAK_DOCS") or "300")
local threads = {}
local next_id = 0

function setup(thread)
   next_id = next_id + 1
   thread:set("thread_id", next_id)
   table.insert(threads, thread)
end

function init(args)
   math.randomseed(os.time() * 1000 + (thread_id or 0) * 7919)
   for _ = 1, 10 do math.random() end
   counts = {}
   miss_n = (thread_id or 0) * 100000000
end

local function doc()
   return string.format("/docs/d%03d.xml", math.random(0, ndocs - 1))
end

function request()
   local r = math.random(100)
   if r <= 78 then                         -- hit
      return wrk.format("GET", doc())
   elseif r <= 90 then                     -- miss: params never seen before
      miss_n = miss_n + 1
      return wrk.format("GET", doc() .. "?x=" .. miss_n)
   elseif r <= 96 then                     -- 404
      return wrk.format("GET", "/docs/missing-" .. math.random(1000) .. ".xml")
   else                                    -- malformed source: 500
      return wrk.format("GET", "/bad.xml")
   end
end

function response(status, headers, body)
   counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
   local total = {}
   for _, t in ipairs(threads) do
      local c = t:get("counts")
      for k, v in pairs(c) do total[k] = (total[k] or 0) + v end
   end
   local parts = {}
   for k, v in pairs(total) do table.insert(parts, string.format('"%d": %d', k, v)) end
   local e = summary.errors
   io.write(string.format(
      'SOAKJSON {"requests": %d, "statuses": {%s}, "connect": %d, "read": %d, "write": %d, "timeout": %d, "non2xx3xx": %d, "p99_us": %d}\n',
      summary.requests, table.concat(parts, ", "), e.connect, e.read, e.write, e.timeout,
      e.status, latency:percentile(99)))
end
