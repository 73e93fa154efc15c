#!/bin/bash
# source: github colbyago1/scripts-wi-hpc sbatch/run.sh
# adapted: -A and -p added for this cluster
#
#SBATCH --job-name=sample               # create a short name for your job
#SBATCH --nodes=1                       # node count
#SBATCH --ntasks=1                      # total number of tasks across all nodes
#SBATCH --cpus-per-task=1               # cpu-cores per task (>1 if multi-threaded tasks)
#SBATCH --mem=3GB                       # total memory allocated for all tasks
#SBATCH --time=01:00:00                 # total run time limit (HH:MM:SS)
#SBATCH --mail-type=begin,end,fail      # send email when job begins,ends,fails
#SBATCH --mail-user=cagostino@wistar.org # email to send alerts to
#SBATCH --output slurm.%N.%j.out        # Output file name and Location
#SBATCH --error slurm.%N.%j.err         # Error file name and Location
#SBATCH -A @ACCOUNT@
#SBATCH -p cpu

# command
echo hello
