#!/bin/bash
# source: issue 28 item 8: a site template's placeholder --mail-user, left as it was (sbatch takes any text)
# adapted: -A and -p added
#SBATCH -A @ACCOUNT@
#SBATCH -p cpu
#SBATCH -t 5
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=<YourNetID>@site.edu
echo "hello"
