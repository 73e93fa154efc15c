#!/bin/bash
# source: github thollfelder/mpi_channel test_job_slurm_echo.sh (Uni Bayreuth)
# adapted: -A added; 8 tasks per node scaled to 4; nodelist node20 -> c1
#SBATCH -A @ACCOUNT@
#SBATCH --job-name job_001                              # Specifies name for job allocation; default is script name
#SBATCH --output job.%j.out 
#SBATCH --nodes 1                                       # Required number of nodes
#SBATCH --ntasks-per-node 4                             # Maximum processes per node
#SBATCH --time 00:05:00                                 # Sets a time limit
#SBATCH --nodelist c1                                   # Requests a specific list of hosts
#SBATCH --exclusive                                     # Job allocation does not share node with others
#SBATCH --mail-type=END,FAIL                            # Mail events (NONE, BEGIN, END, FAIL, ALL)
#SBATCH --mail-user=toni.hollfelder@uni-bayreuth.de     # Where to send mail

echo "SLURM_JOB_ID | SLURM_JOB_NAME:$SLURM_JOB_ID | $SLURM_JOB_NAME"
