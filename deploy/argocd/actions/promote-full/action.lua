-- kubectl canary-l4 promote --full: adopts at once, the canary becomes the stable version.
obj.spec.transition = "Adopted"
return obj
