#!/bin/bash
set -euo pipefail
cat > /app/backup.sh <<'SH'
#!/bin/bash
# Copy SRC/*.txt into DEST; print the number of files copied.
src=$1
dest=$2
mkdir -p -- "$dest"
count=0
for f in "$src"/*.txt; do
    [ -f "$f" ] || continue
    cp -- "$f" "$dest/"
    count=$((count + 1))
done
echo "$count"
SH
chmod 755 /app/backup.sh
