#!/bin/bash
printf '#!/bin/bash\necho hello\n' > /app/greet.sh && chmod +x /app/greet.sh
