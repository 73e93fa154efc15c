#!/bin/bash -x
# source: github simon-schlepphorst/KokkosDslashWorkspace runs/sbatch_jusuf_clang.sh (JSC JUSUF)
# adapted: account, partition batch -> cpu; 256 CPUs scaled to 4
#SBATCH --account=@ACCOUNT@
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=4
#SBATCH --partition=cpu

module load Clang

export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}
export OMP_PROC_BIND=spread
export OMP_PLACES=threads
srun --exclusive --cpu-bind=none "$@"
