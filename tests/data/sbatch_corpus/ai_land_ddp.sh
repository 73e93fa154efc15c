#!/bin/bash
# source: github da-ewanp/ai-land ai_land_minimal/sbatch_train_ddp.sh (ECMWF)
# adapted: account, -p gpu added; qos ng -> normal; 32 CPUs per task scaled to 1, 228GB to 3GB (its slurm/ directory made
#   before submitting). The last line, "!#SBATCH", is not a directive: sbatch stops reading there, and so must gw.
#SBATCH -p gpu
#SBATCH --qos=normal
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --mem=3GB
#SBATCH --time=48:00:00
#SBATCH --account=@ACCOUNT@
#SBATCH --output=slurm/test-ddp.%j.out
#SBATCH --error=slurm/test-ddp.%j.out
!#SBATCH --signal=SIGUSR1@90

module load conda
conda activate ml-tt
srun python training.py
