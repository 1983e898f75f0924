#!/bin/sh
echo "running app"
