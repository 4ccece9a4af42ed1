-- bloom.lua: add items to, or check items against, one visitor's scalable Bloom filter.
--
-- Plain Redis (6.2+, Valkey): the filter is one string of bits holding its sub-filters
-- one after another, and a hash of its shape. Sub-filter j (from 0) holds
-- n_j = capacity * expansion^j items at error rate p_j = error * 0.5^(j+1), so the
-- compound false-positive rate stays under `error` however far it scales (the sum of the
-- p_j is below error). m_j = ceil(-n_j ln p_j / (ln 2)^2) bits, rounded up to whole bytes,
-- and k_j = round(m_j / n_j * ln 2) bits per item. Bit i of an item in sub-filter j is
-- (h1 + i*h2) mod m_j, with h1, h2 the two 64-bit halves of the item's 128-bit hash
-- (computed by the caller). Lua numbers are doubles, so the 64-bit halves are reduced
-- modulo m_j 16 bits at a time, exactly.
--
-- Atomic, so two requests adding the same new item count it once. An item is added to
-- the newest sub-filter unless some sub-filter already holds it ("added" = at least one
-- bit newly set); a full newest sub-filter gets a successor, or, when non-scaling, the
-- item is refused (-1). A filter keeps the shape it was made with. No filter grows past
-- ARGV[7] bits, its sub-filters together: an item that would need that is refused (-2),
-- and a filter whose first sub-filter alone is past it is never made (the caller checks
-- the settings first; this holds even if it did not). A check of a filter that does not
-- exist reads nothing and finds nothing.
--
-- The site's filters together stay within its budget (ARGV[8] bytes; lib/bloombudget.lua
-- keeps the books): a filter that would take the site past it is not made, and a full
-- sub-filter gets no successor; those items are refused (-3). A filter is charged its
-- bits plus ARGV[9] bytes. An add or a check (unless ARGV[6] is 0) sets when the filter
-- expires, on its keys and on the books alike.
--
-- KEYS[1]  string  the bits
-- KEYS[2]  hash    the shape: capacity, error, expansion, nonscaling, filters, last, items
-- KEYS[3..5]       the site's books: live (zset), sizes (hash), budget (hash)
-- ARGV[1]  "add" or "check"
-- ARGV[2..5]  capacity, error rate, expansion, nonscaling ("1"/"0") for a new filter
-- ARGV[6]  idle TTL in seconds (both keys), 0 for none (a check that only looks)
-- ARGV[7]  the most bits a filter may hold, all its sub-filters together
-- ARGV[8]  the site's budget, bytes, all its filters together
-- ARGV[9]  the bytes a filter is charged beyond its bits
-- ARGV[10] the visitor's digest (the filter's name on the books)
-- ARGV[11..]  item hashes, 32 hex digits each
--
-- Returns {answers, notice}: one number per item: add: 1 added, 0 probably there
-- already, -1 refused (non-scaling filter full), -2 refused (at the size limit), -3
-- refused (the site's budget); check: 1 probably there, 0 certainly not. The notice:
-- 1 when this call began refusing for the budget, 2 when the budget has room again
-- (the caller logs each once), else 0.
local mode = ARGV[1]
local max_bits = tonumber(ARGV[7])
local FIRST_ITEM = 11
local LIVE, SIZES, BUDGET, MEMBER = KEYS[3], KEYS[4], KEYS[5], ARGV[10]
local limit, overhead = tonumber(ARGV[8]), tonumber(ARGV[9])
local meta = redis.call('HMGET', KEYS[2], 'capacity', 'error', 'expansion', 'nonscaling', 'filters', 'last', 'items')
local capacity, err, expansion, nonscaling, filters, last, items
if meta[1] then
  capacity, err, expansion = tonumber(meta[1]), tonumber(meta[2]), tonumber(meta[3])
  nonscaling, filters, last, items = meta[4] == '1', tonumber(meta[5]), tonumber(meta[6]), tonumber(meta[7])
else
  capacity, err, expansion = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  nonscaling, filters, last, items = ARGV[5] == '1', 1, 0, 0
end

local LN2 = math.log(2)
local shapes, offset = {}, 0
local function shape_of(j)
  local n = capacity * expansion ^ j
  local p = err * 0.5 ^ (j + 1)
  local m = math.ceil(math.ceil(-n * math.log(p) / (LN2 * LN2)) / 8) * 8
  return n, m, math.max(1, math.floor(m / n * LN2 + 0.5))
end
local function add_shape(j)
  local n, m, k = shape_of(j)
  shapes[j + 1] = {n = n, m = m, k = k, off = offset}
  offset = offset + m
end
for j = 0, filters - 1 do add_shape(j) end

local function every(answer)
  local result = {}
  for i = FIRST_ITEM, #ARGV do result[#result + 1] = answer end
  return result
end
-- No filter to check (nothing seen), or none to make (its first sub-filter is past the
-- limit; `not <=` refuses a NaN or infinite size too): nothing to read or write.
if not meta[1] and (mode == 'check' or not (offset <= max_bits)) then
  return {every((mode == 'check') and 0 or -2), 0}
end

local ttl = tonumber(ARGV[6])
local now, books = bloombudget.now(), nil
local deadline = ttl > 0 and bloombudget.int(now + ttl * 1000) or '+inf'
if mode == 'add' then
  bloombudget.prune(LIVE, SIZES, BUDGET, now)
  books = bloombudget.state(SIZES, BUDGET, MEMBER)
  -- A new filter must fit whole (its first sub-filter and its overhead), or it is not made.
  if not meta[1] and not bloombudget.fits(books, offset / 8 + overhead, limit) then
    return {every(-3), bloombudget.refuse(BUDGET, now)}
  end
end

local function mod64(hex, m)
  local r = 0
  for c = 1, 13, 4 do r = (r * 65536 + tonumber(string.sub(hex, c, c + 3), 16)) % m end
  return r
end

local function bit_ops(h, s, set)
  local a, b = mod64(string.sub(h, 1, 16), s.m), mod64(string.sub(h, 17, 32), s.m)
  if b == 0 then b = 1 end
  local ops, c = {}, 0
  for i = 0, s.k - 1 do
    local pos = s.off + (a + i * b) % s.m
    if set then
      ops[c + 1] = 'SET'; ops[c + 2] = 'u1'; ops[c + 3] = pos; ops[c + 4] = 1; c = c + 4
    else
      ops[c + 1] = 'GET'; ops[c + 2] = 'u1'; ops[c + 3] = pos; c = c + 3
    end
  end
  return ops
end

local function present(h)
  for j = #shapes, 1, -1 do  -- newest first: that is where recent items are
    local bits = redis.call('BITFIELD', KEYS[1], unpack(bit_ops(h, shapes[j], false)))
    local all = true
    for i = 1, #bits do if bits[i] == 0 then all = false; break end end
    if all then return true end
  end
  return false
end

-- Allocate the bits at their exact size: growing a string bit by bit makes Redis double
-- its allocation each time (sds greedy growth), and a filter would cost twice its bits.
local function allocate()
  local want = offset / 8
  local have = redis.call('STRLEN', KEYS[1])
  if have < want then
    local bits = redis.call('GET', KEYS[1]) or ''
    redis.call('SET', KEYS[1], bits .. string.rep('\0', want - have))
  end
end
local grow = not meta[1] and mode == 'add'
local result, refused = {}, false
for i = FIRST_ITEM, #ARGV do
  local h = ARGV[i]
  if present(h) then
    result[#result + 1] = (mode == 'add') and 0 or 1
  elseif mode == 'check' then
    result[#result + 1] = 0
  else
    if last >= shapes[filters].n and nonscaling then
      result[#result + 1] = -1
    elseif last >= shapes[filters].n and not (offset + select(2, shape_of(filters)) <= max_bits) then
      result[#result + 1] = -2
    elseif last >= shapes[filters].n and not bloombudget.fits(books, (offset + select(2, shape_of(filters))) / 8 + overhead, limit) then
      result[#result + 1] = -3
      refused = true
    else
      if last >= shapes[filters].n then
        add_shape(filters)
        filters = filters + 1
        last = 0
        grow = true
      end
      if grow then allocate(); grow = false end
      redis.call('BITFIELD', KEYS[1], unpack(bit_ops(h, shapes[filters], true)))
      last = last + 1
      items = items + 1
      result[#result + 1] = 1
    end
  end
end

local notice = 0
if mode == 'add' then
  redis.call('HSET', KEYS[2], 'capacity', capacity, 'error', err, 'expansion', expansion,
    'nonscaling', nonscaling and '1' or '0', 'filters', filters, 'last', last, 'items', items)
elseif ttl > 0 then  -- a check is activity too
  books = bloombudget.state(SIZES, BUDGET, MEMBER)
end
if books then
  if ttl > 0 then
    redis.call('PEXPIREAT', KEYS[1], deadline)
    redis.call('PEXPIREAT', KEYS[2], deadline)
  end
  notice = bloombudget.charge(LIVE, SIZES, BUDGET, MEMBER, books, offset / 8 + overhead, deadline, limit)
  if refused then notice = bloombudget.refuse(BUDGET, now) end
end
return {result, notice}
