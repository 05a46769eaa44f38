# Numba kernels, compiled once before any job uses them (issue 42). Every
# kernel is kept in numba's on-disk cache (bfio.ground.jit), so once compiled a job
# loads it (about a second for all of BF-IO's); without this rule the first
# parallel jobs would each compile the same kernels at once (tens of seconds
# each, and two processes writing one kernel's cache entry at once can corrupt it). One job
# per group of kernels (bfio.ground.kernel_cache.KERNEL_GROUPS, their scenarios in bfio.pipeline.kernels_warmup.GROUPS: the simulator's, the theory
# checks'; the groups share no kernel, so their jobs may run at once); every job
# that runs kernels takes its group's marker as input (kernels_compiled(group),
# common.smk), ancient: a rerun of the compile job (its code changed) never
# reruns the jobs that wait for it. When numba's cache holds the group already
# for this checkout (a compile of the same kernel sources from the same package
# directory by any run or `bfio compile --group/--all`: bfio.ground.kernel_cache.group_ready;
# numba files kernels by their source's path, so another clone's or worktree's
# compile does not count), the job writes its marker without importing numba.


rule compile_kernels:
    output:
        "logs/kernels/{group}.compiled",
    params:
        code=code_fingerprint(["pipeline/kernels_warmup.py"]),
    wildcard_constraints:
        group="|".join(KERNEL_GROUPS),
    log:
        "logs/kernels/{group}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/compile_kernels.py"
