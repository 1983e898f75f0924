#!/bin/bash
awk '{ s += $1 } END { print s }' /app/amounts.txt > /app/total.txt
