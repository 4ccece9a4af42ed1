-- bloom_native.lua: bloom.lua's add and check on a server with RedisBloom (BF.*): the
-- module's scalable filter, held to the same per-filter limit and site budget, in one
-- atomic step with the books (lib/bloombudget.lua).
--
-- A new filter is BF.RESERVEd with the first sub-filter at half the target rate (as in
-- bloom.lua), measured (BF.INFO SIZE), and taken back at once if it does not fit the
-- budget. The module grows a filter by itself inside BF.MADD when its newest sub-filter
-- is full, and a growth cannot be taken back: so items go in in steps that each fit the
-- room left (capacity minus items, from BF.INFO), and before a step that must grow, the
-- new sub-filter's size is bounded from above (next_link_bytes) and checked against the
-- per-filter limit and the budget. After the add, the filter is charged what it measures.
--
-- KEYS[1]  the filter (the module's type)
-- KEYS[2..4]  the site's books: live (zset), sizes (hash), budget (hash)
-- ARGV[1]  "add" or "check"
-- ARGV[2..5]  capacity, error rate, expansion, nonscaling ("1"/"0") for a new filter
-- ARGV[6]  idle TTL in seconds, 0 for none (a check that only looks)
-- ARGV[7]  the most bytes a filter may take
-- ARGV[8]  the site's budget, bytes, all its filters together
-- ARGV[9]  the bytes a filter is charged beyond its own size
-- ARGV[10] the visitor's digest (the filter's name on the books)
-- ARGV[11..]  the items
--
-- Returns {answers, notice} as bloom.lua does (-1: a non-scaling filter is full).
local mode, ttl, max_bytes = ARGV[1], tonumber(ARGV[6]), tonumber(ARGV[7])
local limit, overhead = tonumber(ARGV[8]), tonumber(ARGV[9])
local KEY, LIVE, SIZES, BUDGET, MEMBER = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[10]
local FIRST_ITEM, STEP = 11, 1000  -- (unpack() is bounded: at most STEP items a command)
local LN2 = math.log(2)

local function every(answer)
  local result = {}
  for i = FIRST_ITEM, #ARGV do result[#result + 1] = answer end
  return result
end

-- Items first..last of ARGV through a BF command, STEP at a time, answers appended to `into`.
local function each(command, first, last, into)
  for i = first, last, STEP do
    local answers = redis.call(command, KEY, unpack(ARGV, i, math.min(i + STEP - 1, last)))
    for _, a in ipairs(answers) do into[#into + 1] = a end
  end
end

local function info()
  local reply, fields = redis.call('BF.INFO', KEY), {}
  for i = 1, #reply, 2 do
    local name = reply[i]
    fields[type(name) == 'table' and name.ok or name] = reply[i + 1]  -- (the module answers the names as status replies)
  end
  return tonumber(fields['Capacity']), tonumber(fields['Size']), tonumber(fields['Number of filters']),
    tonumber(fields['Number of items inserted']), tonumber(fields['Expansion rate'])  -- (nil: non-scaling)
end

-- An upper bound on the bytes of the sub-filter the module adds next. Its links hold
-- c0 * e^j items at r0 * 0.5^j, so b_j = -ln(r_j)/ln(2)^2 = b_0 + j/ln 2 bits an item; the
-- filter's bits an item so far (8 * size / capacity, its headers too) are at least b_0.
-- Plus rounding to 64 bits and a link's header.
local function next_link_bytes(capacity, size, filters, expansion)
  local first = expansion == 1 and capacity / filters or capacity * (expansion - 1) / (expansion ^ filters - 1)
  local items = first * expansion ^ filters
  local per_item = 8 * size / capacity + filters / LN2
  return math.ceil(items * per_item / 8) + 8 + 128, items
end

-- A new filter's first sub-filter: its bits as bloom.lua counts them (at error / 2: what
-- the settings are checked against), and the bound on what the module makes of it (it
-- halves the rate of the first sub-filter again).
local function first_link_bytes(divisor)
  local capacity, err = tonumber(ARGV[2]), tonumber(ARGV[3])
  return math.ceil(capacity * -math.log(err / divisor) / (LN2 * LN2) / 8)
end

if mode == 'check' then
  if redis.call('EXISTS', KEY) == 0 then return {every(0), 0} end
  local result = {}
  each('BF.MEXISTS', FIRST_ITEM, #ARGV, result)
  local notice = 0
  if ttl > 0 then  -- a check is activity too
    local now = bloombudget.now()
    local deadline = bloombudget.int(now + ttl * 1000)
    redis.call('PEXPIREAT', KEY, deadline)
    local _, size = info()
    notice = bloombudget.charge(LIVE, SIZES, BUDGET, MEMBER, bloombudget.state(SIZES, BUDGET, MEMBER), size + overhead, deadline, limit)
  end
  return {result, notice}
end

local now = bloombudget.now()
local deadline = ttl > 0 and bloombudget.int(now + ttl * 1000) or '+inf'
bloombudget.prune(LIVE, SIZES, BUDGET, now)
local books = bloombudget.state(SIZES, BUDGET, MEMBER)
if redis.call('EXISTS', KEY) == 0 then
  if not (first_link_bytes(2) <= max_bytes) then return {every(-2), 0} end  -- (the caller checks the settings first)
  if not bloombudget.fits(books, first_link_bytes(4) + 8 + 128 + overhead, limit) then
    return {every(-3), bloombudget.refuse(BUDGET, now)}
  end
  local reserve = {'BF.RESERVE', KEY, tonumber(ARGV[3]) / 2, ARGV[2]}
  if ARGV[5] == '1' then reserve[#reserve + 1] = 'NONSCALING'
  else reserve[#reserve + 1] = 'EXPANSION'; reserve[#reserve + 1] = ARGV[4] end
  redis.call(unpack(reserve))
  local _, size = info()
  if not bloombudget.fits(books, size + overhead, limit) then  -- (the bound above makes this rare)
    redis.call('DEL', KEY)
    return {every(-3), bloombudget.refuse(BUDGET, now)}
  end
end

-- The items that cannot go in: 0 where one is there already, else `answer`.
local function refuse_rest(i, answer, result)
  local there = {}
  each('BF.MEXISTS', i, #ARGV, there)
  for _, a in ipairs(there) do result[#result + 1] = (a == 1) and 0 or answer end
end

local result, refused, i = {}, false, FIRST_ITEM
while i <= #ARGV do
  local capacity, size, filters, inserted, expansion = info()
  local room = capacity - inserted  -- new items that fit before the module grows the filter
  if room <= 0 then
    if not expansion then refuse_rest(i, -1, result); break end
    local grown, items = next_link_bytes(capacity, size, filters, expansion)
    if not (size + grown <= max_bytes) then refuse_rest(i, -2, result); break end
    if not bloombudget.fits(books, size + grown + overhead, limit) then
      local before = #result
      refuse_rest(i, -3, result)
      for j = before + 1, #result do if result[j] == -3 then refused = true end end
      break
    end
    room = math.max(1, math.floor(items))  -- one growth: its new sub-filter holds this many
  end
  local last = math.min(#ARGV, i + math.min(room, STEP) - 1)
  local answers = redis.call('BF.MADD', KEY, unpack(ARGV, i, last))
  for _, a in ipairs(answers) do
    if type(a) == 'table' then break end  -- an error (the module answers no further): a full non-scaling filter
    result[#result + 1] = a
  end
  i = FIRST_ITEM + #result
  if i <= last then refuse_rest(i, -1, result); break end  -- (not expected: room was counted)
end

if ttl > 0 then redis.call('PEXPIREAT', KEY, deadline) end
local _, size = info()
local notice = bloombudget.charge(LIVE, SIZES, BUDGET, MEMBER, books, size + overhead, deadline, limit)
if refused then notice = bloombudget.refuse(BUDGET, now) end
return {result, notice}
