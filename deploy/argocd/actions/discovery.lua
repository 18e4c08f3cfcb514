-- Which canary-l4 actions Argo CD offers for a CanaryRelease, by the rules `kubectl canary-l4` refuses
-- them by (src/plugin/actions.ts): none once it is over or handing back (the phase or the transition is
-- Adopted or Deprecated); promote while a step remains; pause while not paused, resume while paused
-- (the plugin takes those too, but they would change nothing). Offered or not, each is listed: disabled.
local actions = {}
local spec = obj.spec or {}
local status = obj.status or {}
local transition = (status.transition ~= nil and status.transition.type) or spec.transition
local over = status.phase == "Adopted" or status.phase == "Deprecated"
  or transition == "Adopted" or transition == "Deprecated"
local steps = spec.steps or {}

actions["promote"] = {
  ["displayName"] = "Promote the current step",
  ["disabled"] = over or (status.currentStep or 0) >= #steps, -- no steps: none to promote
}
actions["promote-full"] = { ["displayName"] = "Promote fully (adopt)", ["disabled"] = over }
actions["pause"] = { ["displayName"] = "Pause", ["disabled"] = over or spec.paused == true }
actions["resume"] = { ["displayName"] = "Resume", ["disabled"] = over or spec.paused ~= true }
actions["abort"] = { ["displayName"] = "Abort (roll back)", ["disabled"] = over }
return actions
