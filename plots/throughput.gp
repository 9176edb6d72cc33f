# throughput.gp — per run: median tokens/s with its interquartile range
# (top) and the share of step time spent waiting for data (bottom).
# Data and variables: fig_throughput.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

# about three tics per panel: 1, 2 or 5 times a power of ten
nice(x) = (x <= 0 ? 1 : (e = 10**floor(log10(x/3)), f = x/3/e, (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e))
stats datafile index 0 using ($6/1000) name "TOK" nooutput
stats datafile index 0 using 7 name "WAIT" nooutput

rotate = n > 4
bottom_in = rotate ? 0.55 : 0.3
set multiplot layout 2, 1 margins 0.7/3.5, 0.97, bottom_in/height, 1 - 0.08/height spacing 0, 0.12/height
set style fill solid 0.85 noborder
set boxwidth 0.7
set xrange [-0.6:n-0.4]
set grid noxtics ytics
set xtics scale 0

set ylabel "10^3 tokens/s" offset 0.5, 0
set yrange [0:TOK_max*1.05]
set ytics nice(TOK_max)
set format x ""
# the IQR as a capped vertical line (vectors: gnuplot's errorbars blank out
# a disc around the median)
plot datafile index 0 using 1:($4/1000):(0.7):3 with boxes lc rgb variable notitle, \
     '' index 0 using 1:($5/1000):(0):(($6-$5)/1000) with vectors nohead lc rgb "#333333" lw 0.8 notitle, \
     '' index 0 using ($1-0.1):($5/1000):(0.2):(0) with vectors nohead lc rgb "#333333" lw 0.8 notitle, \
     '' index 0 using ($1-0.1):($6/1000):(0.2):(0) with vectors nohead lc rgb "#333333" lw 0.8 notitle

set ylabel "data wait (%)" offset 0.5, 0
set yrange [0:(WAIT_max > 0 ? WAIT_max*1.1 : 1)]
set ytics nice(WAIT_max)
set format x "%g"
if (rotate) { set xtics rotate by 30 right }
plot datafile index 0 using 1:7:(0.7):3:xtic(2) with boxes lc rgb variable notitle
unset multiplot
