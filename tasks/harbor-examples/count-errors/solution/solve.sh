#!/bin/bash
awk '$3 == "ERROR"' /app/logs/service.log | wc -l > /app/error_count.txt
