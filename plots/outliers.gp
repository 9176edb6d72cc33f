# outliers.gp — the block GEMMs' input outlier statistics over steps: a
# column per run; rows amax, kurtosis, top-k energy share (log scales); a
# line per (block, GEMM), colour by GEMM, dash by block. Data and
# variables: fig_outliers.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

top_in = 0.55      # the key and the run labels above the panels
bottom_in = 0.55
left_in = 0.85
set multiplot layout 3, n columnsfirst margins left_in/width, 0.98, bottom_in/height, 1 - top_in/height \
    spacing 0.5/width, 0.16/height
set xrange [xmin:xmax]
set logscale y
set format y "10^{%L}"
set mxtics 2
unset key
do for [i=1:n] {
    do for [row=1:3] {
        if (row < 3) { set format x ""; unset xlabel } else { set format x "%g"; set xlabel "optimizer step" }
        unset ylabel
        if (i == 1 && row == 1) { set ylabel "amax" }
        if (i == 1 && row == 2) { set ylabel "kurtosis" }
        if (i == 1 && row == 3) { set ylabel "top-k energy share" }
        if (row == 1) {
            set label 1 word(titles, i) at graph 0, graph 1 offset 0, 0.55 left noenhanced font ",8"
        } else {
            unset label 1
        }
        if (i == 1 && row == 1) {
            set key horizontal center top at screen 0.5, screen 1 - 0.02/height maxrows 1 samplen 1.5 width -1 font ",7"
            plot for [s=1:ns] datafile index (i-1)*ns + s-1 using 1:(row == 1 ? $2 : row == 2 ? $3 : $4) \
                     with linespoints lw 0.8 pt 7 ps 0.25 lc rgb word(scolor, s) dt int(word(sdash, s)) notitle, \
                 for [g=1:words(gnames)] keyentry with lines lw 1.2 lc rgb word(gcolors, g) title word(gnames, g), \
                 for [b=1:nblocks] keyentry with lines lw 0.8 lc rgb "#444444" dt b title sprintf("block %d", b-1)
            unset key
        } else {
            plot for [s=1:ns] datafile index (i-1)*ns + s-1 using 1:(row == 1 ? $2 : row == 2 ? $3 : $4) \
                     with linespoints lw 0.8 pt 7 ps 0.25 lc rgb word(scolor, s) dt int(word(sdash, s)) notitle
        }
    }
}
unset multiplot
