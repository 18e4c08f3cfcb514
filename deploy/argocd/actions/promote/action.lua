-- kubectl canary-l4 promote: releases the pause and the analysis gate of the current step.
local status = obj.status or {}
obj.spec.promotedStep = status.currentStep or 0
return obj
