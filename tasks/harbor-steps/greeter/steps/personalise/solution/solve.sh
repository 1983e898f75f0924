#!/bin/bash
cat > /app/greet.sh <<'SH'
#!/bin/bash
if [ $# -gt 0 ]; then echo "hello, $1!"; else echo hello; fi
SH
chmod +x /app/greet.sh
