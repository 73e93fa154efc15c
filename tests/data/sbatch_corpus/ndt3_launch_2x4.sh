#!/bin/bash
# source: github maralkasiri/ndt3 slurm/launch_2x4_l40s.sh (Pitt CRC)
# adapted: -A added; --cluster (getopt's abbreviation of --clusters) gpu -> gwlocal, partition l40s -> gpu; 16 CPUs per task
#   scaled to 1, 480G to 3G (its slurm_logs/ directory made before submitting); 6 days scaled to the gpu partition's MaxTime, 2 days
#SBATCH -A @ACCOUNT@
#SBATCH --job-name=ndt3
#SBATCH --cluster=gwlocal
#SBATCH --partition=gpu
#SBATCH --nodes=2                # node count
#SBATCH --ntasks-per-node=4      # total number of tasks per node
#SBATCH --cpus-per-task=1        # cpu-cores per task (>1 if multi-threaded tasks)
#SBATCH --mem=3G                 # default is 4G per core, 256G. But no one else should be using this node.
#SBATCH --gres=gpu:4             # number of gpus per node
#SBATCH --time=2-00:00:00          # total run time limit (HH:MM:SS)
#SBATCH --error=slurm_logs/job.%J.err
#SBATCH --output=slurm_logs/job.%J.out


# Nope, signal not supported yet SBATCH --signal=B:TERM@05:00

echo $@
hostname
srun python -u run.py nodes=2 slurm_use_scratch=True $@
