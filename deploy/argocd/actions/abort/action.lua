-- kubectl canary-l4 abort --reason: every Service goes back to the stable version.
obj.spec.transition = "Deprecated"
obj.spec.transitionReason = "aborted in Argo CD"
return obj
