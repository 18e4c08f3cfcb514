-- kubectl canary-l4 pause: the current step holds until resume.
obj.spec.paused = true
return obj
