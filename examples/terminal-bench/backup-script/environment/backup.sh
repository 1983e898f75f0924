#!/bin/bash
# Copy SRC/*.txt into DEST; print the number of files copied.
src=$1
dest=$2
mkdir -p $dest
count=0
for f in $(ls $src | grep '\.txt$'); do
    cp $src/$f $dest/$f
    count=$((count + 1))
done
echo $count
