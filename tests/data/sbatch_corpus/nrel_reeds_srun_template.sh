#!/bin/bash
# source: github NREL/ReEDS-2.0 hourlize/inputs/configs/srun_template.sh
# adapted: account and mail-user placeholders filled; --mem scaled from 246000 (MB) to 2000
#SBATCH --account=@ACCOUNT@
#SBATCH --time=4:00:00
#SBATCH --ntasks-per-node=1
#SBATCH --mail-user=someone@example.org
#SBATCH --mail-type=BEGIN,END,FAIL
#SBATCH --mem=2000    # RAM in MB; up to 246000 for normal or 2000000 for bigmem on kestrel

echo run
