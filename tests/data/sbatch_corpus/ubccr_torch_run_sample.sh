#!/bin/bash -l
# source: github ubccr/ccr-examples slurm/2_ApplicationSpecific/huggingface/torch-run-sample.sh
# adapted: -A added; partition general-compute -> gpu, qos general-compute -> normal, cluster ub-hpc -> gwlocal; 12G scaled to 3G

#SBATCH -A @ACCOUNT@
#SBATCH --partition=gpu
#SBATCH --qos=normal
#SBATCH --clusters=gwlocal
#SBATCH --time=01:00:00
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=4
#SBATCH --mem=3G
#SBATCH --gpus-per-node=2

module load foss pytorch transformers
MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
srun --wait=60 --kill-on-bad-exit=1 --jobid $SLURM_JOB_ID bash -c "python3 -m torch.distributed.run --node_rank \$SLURM_PROCID run_clm.py"
