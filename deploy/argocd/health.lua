-- Argo CD health check of a canary-l4.io CanaryRelease (Lua 5.1, as Argo CD's gopher-lua runs it,
-- with the base and table libraries only: no string library),
-- from the status canary-l4 writes (docs/canaryrelease.md § Status):
--   Progressing  the controller has not seen this generation yet; the release converges, runs a
--                timed or analysis-gated step, waits (pods, another release), or hands back
--   Suspended    it waits for a person: a step whose pause has no duration, spec.paused, or every
--                step done (or no steps) with nothing left but adopting it
--   Healthy      Adopted: the canary is the stable version
--   Degraded     a Failure condition is True, or it was rolled back (Deprecated)
local hs = {}

local function condition(status, type)
  for _, item in ipairs(status.conditions or {}) do
    if item.type == type then
      return item
    end
  end
  return nil
end

local status = obj.status
local generation = obj.metadata.generation
if status == nil or status.observedGeneration == nil or (generation ~= nil and status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "waiting for the controller to observe generation " .. tostring(generation or 1)
  return hs
end

local phase = status.phase
local transition = status.transition or {}
local failure = condition(status, "Failure")
if failure ~= nil and failure.status == "True" then
  hs.status = "Degraded"
  hs.message = failure.reason .. ": " .. failure.message
  return hs
end

if phase == "Adopted" then
  hs.status = "Healthy"
  hs.message = "adopted: " .. (transition.message or "the canary is the stable version")
  return hs
end
if phase == "Deprecated" then
  hs.status = "Degraded"
  hs.message = "rolled back (" .. (transition.reason or "Deprecated") .. "): " .. (transition.message or "")
  return hs
end
if phase == "Adopting" or phase == "Deprecating" then
  hs.status = "Progressing"
  hs.message = (phase == "Adopting" and "adopting: " or "rolling back: ") .. (transition.message or "")
  return hs
end

-- Running (or Holding without a Failure: waiting for another release). A person's hold first.
local spec = obj.spec or {}
local steps = spec.steps or {}
local current = status.currentStep or 0
local pause = status.pause
local step = steps[current + 1]
if phase ~= "Holding" and pause ~= nil and step ~= nil then
  local promoted = spec.promotedStep ~= nil and spec.promotedStep >= current
  local untimed = step.pause ~= nil and step.pause.duration == nil
  if spec.paused == true or (untimed and not promoted) then
    hs.status = "Suspended"
    hs.message = pause.reason
    return hs
  end
end

local ready = condition(status, "Ready")
if phase == "Holding" or ready == nil or ready.status ~= "True" or step ~= nil then
  local progressing = condition(status, "Progressing")
  hs.status = "Progressing"
  hs.message = (pause ~= nil and pause.reason)
    or (progressing ~= nil and progressing.status == "True" and progressing.message)
    or (ready ~= nil and ready.message)
    or ("phase " .. tostring(phase))
  return hs
end

-- Serving as asked with no step left: only a person moves it on.
hs.status = "Suspended"
hs.message = "serving " .. (status.weights or "") .. ": promote-full adopts it, abort rolls it back"
return hs
