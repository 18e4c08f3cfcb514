-- Runs one of deploy/argocd's scripts as Argo CD does: `obj` set to the resource, in a sandbox with
-- only the base and table libraries (Argo CD opens no string, io or os library), the result printed
-- as JSON. `lua5.1 run.lua SCRIPT < OBJECT`: OBJECT is a Lua expression (test/deploy/argocd.test.ts
-- writes it from JSON), its arrays written `A{...}` so that they print back as arrays.
local ARRAY = {}
local function A(items)
  return setmetatable(items, ARRAY)
end

local read = assert(loadstring("return " .. io.read("*a")))
setfenv(read, { A = A })
local sandbox = {
  obj = read(),
  ipairs = ipairs, pairs = pairs, next = next, type = type, tostring = tostring, tonumber = tonumber,
  error = error, assert = assert, select = select, unpack = unpack, table = table,
}
local script = assert(loadfile(arg[1]))
setfenv(script, sandbox)
local result = script()

local function quote(text)
  return '"' .. text:gsub('[%c"\\]', function(char)
    return string.format("\\u%04x", char:byte())
  end) .. '"'
end

local function encode(value)
  local kind = type(value)
  if kind == "nil" then
    return "null"
  elseif kind == "boolean" then
    return tostring(value)
  elseif kind == "number" then
    return value == math.floor(value) and string.format("%d", value) or string.format("%.17g", value)
  elseif kind == "string" then
    return quote(value)
  elseif kind == "table" then
    local parts = {}
    if getmetatable(value) == ARRAY or (#value > 0 and next(value, #value) == nil) then
      for _, item in ipairs(value) do
        parts[#parts + 1] = encode(item)
      end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    for key, item in pairs(value) do
      parts[#parts + 1] = quote(tostring(key)) .. ":" .. encode(item)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  error("cannot encode a " .. kind)
end

io.write(encode(result))
