#!/bin/bash
# source: github bakerccm/permafrost-pathogens scripts/singlem.sh (UNH Premise)
# adapted: -A added; partition shared -> cpu; 24 cores scaled to 4, 500G to 3G (its slurm/ directory made before submitting)
#SBATCH -A @ACCOUNT@
#SBATCH -N 1  # nodes
#SBATCH -n 4  # cores - many cores have 24 cores on Premise but some have more
#SBATCH -t 1-00:00  # runtime in D-HH:MM
#SBATCH -p cpu  # partition to submit to
#SBATCH --mem=3G  # total mem
##SBATCH --nodelist=node117 # comma separated list of node names to use
#SBATCH -J singlem
#SBATCH -o slurm/singlem-%j.out
#SBATCH -e slurm/singlem-%j.err
##SBATCH --mail-type=BEGIN,END    # notifications: BEGIN,END,FAIL,ALL
##SBATCH --mail-user=

##SBATCH --dependency=afterok:jobid[:jobid...] # job can begin after specified jobs have completed with exit code zero

eval "$(conda shell.bash hook)"
snakemake -j 24 --use-conda --rerun-incomplete all_singlem
