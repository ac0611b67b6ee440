module buzzkit.dev/bench/apnsgo

go 1.19
