#!/bin/bash
# source: github tudasc/MPI-precompute scripts/SLURM_Header.sh (TU Darmstadt Lichtenberg)
# adapted: -A added; 96 CPUs per task scaled to 2, 3800 MB per CPU to 900

#SBATCH -A @ACCOUNT@

# same as -n
#SBATCH --ntasks 2

#SBATCH --mem-per-cpu=900
#same as -t
#SBATCH --time 00:30:00


#same as -c
#SBATCH --cpus-per-task 2
# one node per process

srun ./a.out
