-- tritonops: the front door's prefix key (issue #44), loaded by HAProxy (`lua-load`) on a balancer whose door
-- routes by prompt prefix. `lua.tritonops_prefix_key(N)` is the first N bytes of the request's prompt, read from
-- the part of its JSON body HAProxy holds (its buffer, about 15 kB; a longer body is cut there):
--   {"text_input": ...}            KServe generate / generate_stream
--   {"prompt": ...}                OpenAI completions
--   {"messages": [m0, m1, ...]}    OpenAI chat: the first N bytes of m0's and of m1's "content", joined by a
--                                  newline, so that a system prompt every tenant shares does not send every
--                                  tenant to one replica
-- the first of them at the body's top level. A string's bytes are taken as they stand in the body (escapes
-- kept: the same prompt gives the same key); any other value (token ids, a list of parts) by its JSON text.
-- No usable field, a body that is not a JSON object, or one cut before the field begins: an empty key, which
-- the door does not keep (`set-var(...,ifnotempty)`: a fetch that returns nil gives HAProxy a 0, not nothing),
-- so HAProxy spreads the request instead of hashing it. Never an error.

local SPACE = "[^ \t\r\n]"

local function skip_space(s, i)
  return (s:find(SPACE, i))
end

-- the index of the closing quote of the string that opens at i, or nil when the body ends first
local function string_end(s, i)
  local j = i + 1
  while true do
    local k = s:find('["\\]', j)
    if k == nil then return nil end
    if s:byte(k) == 34 then return k end
    j = k + 2  -- a backslash and the character it escapes
  end
end

-- the index just past the value that starts at i, or nil when the body ends first
local function value_end(s, i)
  local c = s:byte(i)
  if c == 34 then
    local e = string_end(s, i)
    return e and e + 1
  end
  if c == 123 or c == 91 then  -- { or [
    local depth, j = 0, i
    while true do
      local k = s:find('["{}%[%]]', j)
      if k == nil then return nil end
      local b = s:byte(k)
      if b == 34 then
        local e = string_end(s, k)
        if e == nil then return nil end
        j = e + 1
      else
        depth = depth + ((b == 123 or b == 91) and 1 or -1)
        j = k + 1
        if depth == 0 then return j end
      end
    end
  end
  return s:find('[,}%] \t\r\n]', i)  -- a number, true, false, null
end

-- the first n bytes of the value at i: a string's content as it stands, any other value's text
local function head(s, i, n)
  if s:byte(i) == 34 then
    local e = string_end(s, i) or #s + 1
    return s:sub(i + 1, math.min(e - 1, i + n))
  end
  local e = value_end(s, i) or #s + 1
  return s:sub(i, math.min(e - 1, i + n - 1))
end

-- fn(key, where its value starts) for each member of the object that opens at i, until fn says true or the
-- object (or the body) ends
local function members(s, i, fn)
  local j = skip_space(s, i + 1)
  while j ~= nil and s:byte(j) == 34 do
    local e = string_end(s, j)
    if e == nil then return end
    local key = s:sub(j + 1, e - 1)
    j = skip_space(s, e + 1)
    if j == nil or s:byte(j) ~= 58 then return end  -- :
    local v = skip_space(s, j + 1)
    if v == nil or fn(key, v) then return end
    local after = value_end(s, v)
    if after == nil then return end
    j = skip_space(s, after)
    if j == nil or s:byte(j) ~= 44 then return end  -- ,
    j = skip_space(s, j + 1)
  end
end

-- fn(index from 0, where the element starts) for each element of the array that opens at i, as members does
local function elements(s, i, fn)
  local j, index = skip_space(s, i + 1), 0
  while j ~= nil and s:byte(j) ~= 93 do
    if fn(index, j) then return end
    local after = value_end(s, j)
    if after == nil then return end
    j = skip_space(s, after)
    if j == nil or s:byte(j) ~= 44 then return end
    j = skip_space(s, j + 1)
    index = index + 1
  end
end

local function prefix_key(body, n)
  local start = skip_space(body, 1)
  if start == nil or body:byte(start) ~= 123 then return "" end
  local parts = {}
  members(body, start, function(key, v)
    if key == "text_input" or key == "prompt" then
      parts[1] = head(body, v, n)
      return true
    end
    if key == "messages" and body:byte(v) == 91 then
      elements(body, v, function(index, e)
        if body:byte(e) == 123 then
          members(body, e, function(field, c)
            if field == "content" then
              parts[#parts + 1] = head(body, c, n)
              return true
            end
          end)
        end
        return index >= 1
      end)
      return true
    end
  end)
  if #parts == 0 or (#parts == 1 and parts[1] == "") then return "" end
  return table.concat(parts, "\n")
end

core.register_fetches("tritonops_prefix_key", function(txn, n)
  local body = txn.f:req_body()
  if body == nil or body == "" then return "" end
  return prefix_key(body, tonumber(n) or 1024)
end)
