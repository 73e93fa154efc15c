#!/bin/bash
# source: github haertelkar/Masterarbeit ZNormallightning.sh (Lightning on SLURM)
# adapted: -A added; 10 CPUs per task scaled to 4. Two --mail-type lines: the later one wins, as in sbatch; 48 h scaled to the cpu partition's MaxTime, 24 h

# SLURM SUBMIT SCRIPT
#SBATCH -A @ACCOUNT@
#SBATCH --nodes=1          
#SBATCH --ntasks-per-node=1    
#SBATCH --cpus-per-task=4
#SBATCH --time=24:00:00
#SBATCH -J "ZNN"   # job name
#SBATCH --signal=SIGUSR1@90
#SBATCH --mail-user=haertelk@physik.hu-berlin.de   # email address

#SBATCH --mail-type=END
#SBATCH --mail-type=FAIL

export NCCL_DEBUG=INFO
export PYTHONFAULTHANDLER=1
srun python3 lightningTrain.py -v 1905_onlyGridPos -e 25 -m ormal 
