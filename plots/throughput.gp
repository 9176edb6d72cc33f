# throughput.gp — per run: median tokens/s with its interquartile range,
# runs grouped under their recipe (top); per recipe: the mean step time
# stacked by phase, its key beside the bars (bottom).
# Data and variables: fig_throughput.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
height = 3.7  # the width: one column (style.gp), the key beside the lower panel
load plotsdir."/style.gp"

# about three tics per panel: 1, 2 or 5 times a power of ten
nice(x) = (x <= 0 ? 1 : (e = 10**floor(log10(x/3)), f = x/3/e, (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e))
stats datafile index 0 using ($6/1000) name "TOK" nooutput
# the tallest stacked bar: the sum of columns 3 .. 3+nph-1
nph = words(phases)
stack(k) = (s = 0, sum [j=3:k] (valid(j) ? column(j) : 0))
stats datafile index 1 using (stack(2 + nph)) name "MS" nooutput

# one colour per phase (Okabe-Ito, then grey for what no phase claims)
array PC[8] = ["#0072B2", "#D55E00", "#009E73", "#56B4E9", "#CC79A7", "#E69F00", "#F0E442", "#BBBBBB"]

# inches: left axis labels, the bottom panel's key on the right
left_in = 0.62
key_in = 1.05
set multiplot
set style fill solid 0.85 noborder
set grid noxtics ytics
set xtics scale 0 noenhanced

# top: a bar per run, grouped by recipe
set lmargin at screen left_in/width
set rmargin at screen 1 - 0.1/width
set tmargin at screen 1 - 0.28/height
set bmargin at screen 2.12/height
set boxwidth 0.8
set xrange [-0.6:xmax+0.6]
set xtics ()
do for [g=1:words(rnames)] { set xtics add (word(rnames, g) word(rpos, g)+0) }
set ylabel "10^3 tokens/s" offset 0.5, 0
set yrange [0:TOK_max*(threads eq "" ? 1.18 : 1.05)]
set ytics nice(TOK_max)
set title (threads eq "" ? "median per run, IQR bars; threads above" : \
           sprintf("median per run, IQR bars; %s thread%s each", threads, threads eq "1" ? "" : "s")) \
    font ",8" offset 0, -0.5
# the IQR as a capped vertical line (vectors: gnuplot's errorbars blank out
# a disc around the median)
plot datafile index 0 using 1:($4/1000):(0.8):3 with boxes lc rgb variable notitle, \
     '' index 0 using 1:($5/1000):(0):(($6-$5)/1000) with vectors nohead lc rgb "#333333" lw 0.8 notitle, \
     '' index 0 using ($1-0.12):($5/1000):(0.24):(0) with vectors nohead lc rgb "#333333" lw 0.8 notitle, \
     '' index 0 using ($1-0.12):($6/1000):(0.24):(0) with vectors nohead lc rgb "#333333" lw 0.8 notitle, \
     '' index 0 using 1:($6/1000):(threads ne "" || $9 <= 0 ? "" : $8 == $9 ? sprintf("%d", $9) : sprintf("%d-%d", $8, $9)) \
        with labels offset 0, 0.45 font ",6" notitle

# bottom: a stacked bar per recipe, the key to its right
unset title
set rmargin at screen 1 - key_in/width
set tmargin at screen 1 - 1.98/height
set bmargin at screen 0.32/height
set boxwidth 0.6
set xrange [-0.6:nrec-0.4]
set xtics ()
set ylabel "ms per step" offset 0.5, 0
set yrange [0:MS_max*1.05]
set ytics nice(MS_max)
set key at screen 1 - key_in/width + 0.05/width, graph 1 left top reverse Left samplen 1 spacing 0.95 font ",7" noenhanced
# stacked: phase k's box spans [sum of phases < k, sum of phases <= k]; the
# key lists the phases that took time, top to bottom as they are stacked
plot for [j=words(shown):1:-1] datafile index 1 using 1:(stack(2 + word(shown, j))):(0.6):xtic(2) with boxes \
         lc rgb PC[word(shown, j)+0] title word(phases, word(shown, j)+0)
unset multiplot
