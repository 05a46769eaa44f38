"""One step of the engine: its kernels, chunked prefill, prefix caches, the step
time, the capacity of a step model and the declared engine parameters.
"""
