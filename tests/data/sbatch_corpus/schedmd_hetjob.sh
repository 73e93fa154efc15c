#!/bin/bash
# source: https://slurm.schedmd.com/heterogeneous_jobs.html (the "new.bash" example of Submitting Jobs)
# adapted: -A added; 16g per CPU scaled to 500m, 8 tasks to 4
# gw-expect: refused hetjob
#SBATCH -A @ACCOUNT@
#SBATCH --cpus-per-task=4 --mem-per-cpu=500m --ntasks=1
#SBATCH hetjob
#SBATCH --cpus-per-task=2 --mem-per-cpu=500m  --ntasks=4
srun run.app
